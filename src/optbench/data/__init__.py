"""The data wing: images, sequences and text in, batches out.

sources.py       where examples come from (cifar10/100, imagefolder, synthetic, mnist1d), decoded and cached
text.py          a character corpus (Tiny Shakespeare): its file checked by sha256 (downloaded when missing), its splits
fingerprint.py   what identifies the data without torch: folder listing, content fingerprints, data-level names
splits.py        train / validation / test splits as uint8 tensors, normalisation constants
noise.py         label noise on the training (and, by protocol, validation) labels
human_labels.py  real human label noise (CIFAR-N): the official label file, fetched, checked and read safely
download.py      fetch datasets ahead of their runs (src/download_data.py), by the code a run fetches them with
pipelines.py     training and evaluation batches: on the device (default), the classic DataLoader, a text's windows
"""
