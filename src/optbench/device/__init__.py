"""The device wing: which device trains, and the one frozen policy of device-dependent choices.

    policy.py     resolve the device; DevicePolicy (AMP, memory format, workers, cuDNN, TF32, compile) with reasons
    fastest.py    time a few training steps per device (device=fastest), cached per machine and model shape
"""
