"""The vocabulary: the words every other room speaks, and nothing else.

What lives here: the value types of a campaign (`relation`: Ask, Case, Verdict, Transcript,
the relation protocol and base class; `model`: Message, Reply, GenerationParams, the model
protocol and its spec; `answer_shape`; `rubric`: what a judge is asked; `simulation`: what a
simulated-model handler reads and is), the events of the log (`events`, decoded in one
place) and the one error tree (`errors`, `config_errors`).

What it may import: the standard library and pydantic. No other room of the harness: it is
the ground floor, and every room above may import it.
"""
