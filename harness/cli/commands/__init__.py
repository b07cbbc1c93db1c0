"""The core CLI commands, one module each; `harness.builtins` registers them and
`harness.cli.main` assembles them."""
