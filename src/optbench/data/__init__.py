"""The data wing: images in, batches out.

    sources.py    where images come from (cifar10/100, imagefolder, synthetic) and their fingerprints
    splits.py     train / validation / test splits as uint8 tensors, normalisation constants
    noise.py      label noise on the training (and, by protocol, validation) labels
    pipelines.py  training and evaluation batches: on the device (default) or the classic DataLoader
"""
