"""The relation families shipped with the harness, one package each.

A family package exposes one `harness.plugins.registry.Family` object, ``FAMILY``, in its
``__init__`` and is found through the ``bias_harness.families`` entry points declared in
``pyproject.toml``. Nothing here is imported by the core; see docs/architecture.md.
"""
