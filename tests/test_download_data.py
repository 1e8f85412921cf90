"""`python src/download_data.py`: datasets fetched ahead of their runs by torchvision's real download code (over
HTTP from a local server here, no network needed), md5-checked and extracted where a run reads them, so the run
then loads them with downloading off; what is in place is not fetched again; bad input and a failed download
are one line, exit 2, and leave what is on disk alone."""

import dataclasses
import functools
import hashlib
import http.server
import io
import pickle
import runpy
import sys
import tarfile
import threading

import numpy as np
import pytest
import torchvision
from conftest import REPO

from optbench.data.splits import load_splits
from optbench.registry import datasets

SCRIPT = REPO / "src" / "download_data.py"
BATCHES = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch"]


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def fake_cifar10_archive() -> tuple[bytes, dict[str, str]]:
    """cifar-10-python.tar.gz in torchvision's layout (5 training batches of 4 images, a test batch of 6), and
    the md5 of each file in it."""
    generator = np.random.default_rng(0)
    files = {}
    for index, name in enumerate(BATCHES):
        count = 6 if name == "test_batch" else 4
        data = generator.integers(0, 256, size=(count, 3072), dtype=np.uint8)
        files[name] = pickle.dumps({"data": data, "labels": [(4 * index + k) % 10 for k in range(count)]})
    files["batches.meta"] = pickle.dumps({"label_names": list(datasets.CIFAR10_CLASSES)})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            member = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            member.size = len(content)
            archive.addfile(member, io.BytesIO(content))
    return buffer.getvalue(), {name: md5(content) for name, content in files.items()}


class Server:
    """A local HTTP server of a folder, counting the requests for each path."""

    def __init__(self, folder):
        self.requests = []
        log = self.requests

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                log.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=folder))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """CIFAR-10 and its CIFAR-10N label file served from a local folder: torchvision's CIFAR10 and the label
    file's descriptor point there, with the fakes' md5 sums (the real ones cannot match)."""
    served = tmp_path / "served"
    served.mkdir()
    archive, sums = fake_cifar10_archive()
    (served / "cifar-10-python.tar.gz").write_bytes(archive)
    labels = b"a stand-in for CIFAR-10_human.pt: the download checks its md5, not its content"
    (served / "CIFAR-10_human.pt").write_bytes(labels)
    server = Server(str(served))
    cifar10 = torchvision.datasets.CIFAR10
    monkeypatch.setattr(cifar10, "url", server.url + "cifar-10-python.tar.gz")
    monkeypatch.setattr(cifar10, "tgz_md5", md5(archive))
    monkeypatch.setattr(cifar10, "train_list", [[name, sums[name]] for name in BATCHES[:5]])
    monkeypatch.setattr(cifar10, "test_list", [["test_batch", sums["test_batch"]]])
    monkeypatch.setattr(cifar10, "meta", {**cifar10.meta, "md5": sums["batches.meta"]})
    monkeypatch.setattr(datasets, "CIFAR_N_RELEASE", server.url)
    descriptor = datasets.DATASETS["cifar10"]
    monkeypatch.setitem(
        datasets.DATASETS,
        "cifar10",
        dataclasses.replace(descriptor, human=dataclasses.replace(descriptor.human, md5=md5(labels))),
    )
    yield server
    server.close()


def download_data(monkeypatch, capsys, *arguments) -> tuple[int, str, str]:
    """Run src/download_data.py in this process (so the mirror's patches apply): (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *map(str, arguments)])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


def test_a_dataset_is_fetched_where_a_run_reads_it_and_only_once(tmp_path, mirror, monkeypatch, capsys):
    data_dir = tmp_path / "data"
    status, out, _ = download_data(monkeypatch, capsys, "cifar10", "--human-labels", "--data-dir", data_dir)
    assert status == 0, out
    assert out.splitlines()[-3:] == [
        f"cifar10: 20 training and 6 test images in {data_dir} (md5-checked)",
        f"cifar10: human label sets aggre, random1, random2, random3, worst in {data_dir}/cifar-n/CIFAR-10_human.pt "
        "(md5-checked)",
        f"runs find them with paths.data_dir={data_dir} (or OPTBENCH_DATA_DIR={data_dir})",
    ]
    assert set(mirror.requests) == {"/CIFAR-10_human.pt", "/cifar-10-python.tar.gz"}
    fetched = len(mirror.requests)  # torchvision asks twice per file: for a redirect, then for the file
    # a run with downloading off now finds the images where the command put them
    splits = load_splits(name="cifar10", data_dir=data_dir, val_size=10, download=False)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (10, 10, 6)
    # a second time nothing is fetched and nothing changes
    before = {path: path.stat().st_mtime_ns for path in data_dir.rglob("*")}
    status, _, _ = download_data(monkeypatch, capsys, "cifar10", "--human-labels", "--data-dir", data_dir)
    assert status == 0 and len(mirror.requests) == fetched
    assert {path: path.stat().st_mtime_ns for path in data_dir.rglob("*")} == before


def test_a_failed_download_is_one_line_and_leaves_the_folder_alone(tmp_path, mirror, monkeypatch, capsys):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "notes.txt").write_text("mine")
    mirror.close()  # the server is gone: the fetch fails as without a network
    status, out, err = download_data(monkeypatch, capsys, "cifar10", "--data-dir", data_dir)
    assert status == 2 and "runs find them" not in out
    (line,) = err.splitlines()
    assert line.startswith(f"error: cifar10 is not in {data_dir} and downloading it failed")
    assert (data_dir / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["imagefolder"], "error: imagefolder has nothing to download"),
        (["cifar10", "synthetic"], "error: synthetic has nothing to download"),
        (["cifar1"], "error: unknown dataset 'cifar1': choose from cifar10, cifar100"),
        ([], "error: the following arguments are required: DATASET"),
        (["cifar10", "--data-dir", "README.md"], "error: --data-dir README.md is a file"),
    ],
)
def test_bad_input_is_one_line_before_anything_is_fetched(arguments, message, mirror, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    status, out, err = download_data(monkeypatch, capsys, *arguments)
    (line,) = err.splitlines()
    assert status == 2 and line.startswith(message) and out == "" and mirror.requests == []


def test_the_default_folder_is_the_runs_paths_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTBENCH_DATA_DIR", str(tmp_path / "shared"))
    assert runpy.run_path(str(SCRIPT))["configured_data_dir"]() == tmp_path / "shared"
