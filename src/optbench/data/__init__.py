"""The data wing: images in, batches out.

sources.py       where images come from (cifar10/100, imagefolder, synthetic), decoded and cached
fingerprint.py   what identifies the data without torch: folder listing, content fingerprints, data-level names
splits.py        train / validation / test splits as uint8 tensors, normalisation constants
noise.py         label noise on the training (and, by protocol, validation) labels
human_labels.py  real human label noise (CIFAR-N): the official label file, fetched, checked and read safely
download.py      fetch datasets ahead of their runs (src/download_data.py), by the code a run fetches them with
pipelines.py     training and evaluation batches: on the device (default) or the classic DataLoader
"""
