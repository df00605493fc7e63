"""`python -m posttrain`: the CLI, so that `torchrun -m posttrain run ...` starts ranks."""

from posttrain.cli import app

app(prog_name="posttrain")
