"""Support code that runs minidp's CUDA kernels on the CPU for the tests."""
