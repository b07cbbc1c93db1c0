"""How one process uses the machine: work computed in a second process (`_process_call`:
one call, or an iterator's items) and the cyclic garbage collector paused around a bulk
pass (`_gc_pause`); asyncio primitives remade per running loop (`per_loop`).

The two private modules exist for speed only. Families reach them only through neutral
facilities of the public surface (`ProcessItems`, `ReportContext.compute_aside`).

What it may import: the vocabulary.
"""
