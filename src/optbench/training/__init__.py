"""The training wing: one run, from a composed config to a finished run directory.

run.py         `train(cfg, run_dir)`: identity check, skip, resume or start, failure records
assemble.py    build everything a run trains with (device, data, noise, model, optimizer, pipeline)
loop.py        the epoch loop: train, evaluate, record, checkpoint, stop on signals or divergence
epoch_record.py  an epoch's metric record: validation, test and how the noisy labels are fit
steps.py       one optimizer step, one training pass, one evaluation pass (no files, no config)
progress.py    the trainer's word on summary.json (built by formats/run_summary.py): the first summary, divergence
console.py     the lines a run prints, and train.log
trackers.py    experiment trackers (conf/logger/): TensorBoard, MLflow, W&B, CSV; each fails alone
tracker_export.py  runs already on disk into MLflow (src/aggregate.py RESULTS --to-tracker mlflow)
checkpoint.py  what a checkpoint holds; saving, loading and restoring it exactly
mirror.py      a durable copy of the run directory (paths.mirror_dir): copy out while training, restore
rng.py         every random generator a run touches: seed, capture, restore
signals.py     graceful stops on SIGTERM, SIGINT and SIGUSR2
provenance.py  library versions and the git state of the code
models.py      CIFAR ResNet-18 with a width knob, and every model a config may choose (build_model)
mnist1d_models.py  MNIST-1D's CNN and MLP (Greydanus & Kobak 2024)
gpt.py         a character GPT of nanoGPT's shape
timing.py      the run's model and training step, handed to device timing (device=fastest, mode=measured)
optim.py       parameter groups, optimizers from their libraries, train/eval modes, the LR schedule
train_command.py  glue between Hydra and train() (src/train.py): up-front checks, exit codes, the run's files
replay.py      train a recorded run again into a scratch folder and compare it epoch by epoch (src/replay.py)
"""
