"""What a workload links (floor 2 of DESIGN §3): the checkpoint client and the output commit.

It imports nothing of ours but the standard-library parts of ``contracts`` (the checkpoint client not even
that), so a training job or a batch step can vendor it without the platform's dependencies.
"""

__all__: list[str] = []
