"""The core CLI commands; `harness.builtins` registers them, `harness.cli` assembles them."""
