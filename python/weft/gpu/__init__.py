"""The GPU harness that test/gpu and bench/ build on: attention kernel units
(kernel_units) and their float64 reference (attention_reference), the
split-KV decode units and their IR (decode_units, decode_ir), the timed
attention launches of the benchmark and autotuner (attention_timing),
NaN-poisoned guarded outputs (poison), weft-run shipped to and run on a GPU
machine (device), and the prepare/check command line (phases). Importing it
needs no GPU; torch is imported by the modules that compute."""
