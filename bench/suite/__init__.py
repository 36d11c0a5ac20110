"""The benchmark suite behind `python bench/run.py`: tfc against PyTorch, JAX, TensorFlow and
ONNX Runtime on the workloads of issue 5.

- workloads.py: what is measured (models, batches, FLOPs, the issue's targets)
- data.py: the synthetic data and the initial weights every framework starts from
- models_tfc.py: the tfc graphs (model-file style signatures functions)
- measure.py: warm-up, timed rounds, medians and the other processes' CPU load
- peak.py: the FMA peak of one core, measured with a small C loop
- runners/: one module per framework; each runs in its own subprocess (worker.py)
- orchestrate.py: starts the workers with their thread settings and collects the results
- report.py: RESULTS.md tables and the JSON document
"""
