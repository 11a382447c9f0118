"""Code-generation backends, one module each (``cuda``: kernels to CUDA C
through NVRTC). Importing this package loads no backend."""
