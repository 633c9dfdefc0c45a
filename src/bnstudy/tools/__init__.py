"""Tools that stand above the studies: the warm-up that compiles every kernel before the jobs
start, and the speed benchmark (the compiled code against PyTorch's own CPU path)."""
