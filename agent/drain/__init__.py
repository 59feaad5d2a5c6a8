"""The drain: the pure plan, the engine that executes it, and the adapters it acts through.

The scheduler and local adapters (Kubernetes, Slurm, local signals), the work lost, the credentials released.
Imports nothing at package load: ``sco-agent check`` stays light.
"""
