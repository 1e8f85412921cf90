"""The device wing: which device trains, and the one frozen policy of device-dependent choices.

    policy.py     resolve the device; DevicePolicy (AMP, memory format, workers, cuDNN, TF32, compile) with reasons
    fastest.py    time a few training steps per device (device=fastest), cached per machine and model shape
    measured.py   device_policy.mode=measured: time the choices uncertain on the device (amp, channels_last, compile)
    sharing.py    how many cores this process may use, and how many runs share them (threads per run)
    awake.py      keep a Mac awake while it trains (caffeinate -i -w <pid>)
    gpu_per_job.py  one GPU per job under a parallel launcher (the `${optbench_gpu_for_job:}` device)

Timing trains a model and step the caller hands down (fastest.TimedModel): nothing here imports training/.
"""
