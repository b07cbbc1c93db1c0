"""Models: everything that answers a prompt.

What lives here: the seeded simulated model with planted biases (`sim`), the local SmolLM2
model (`local`) and the vendor models through their official SDKs with rate, token and
cost budgets (`providers/`). The replay model lives with replay (`harness.verifying`).

What it may import: the vocabulary, runtime, store, reporting and plug-ins (the simulated
model asks the registry for the families' answer rules).
"""
