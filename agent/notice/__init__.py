"""Notice intake: reclaim notices and advisories up to the decision to drain.

From NATS and the metadata endpoint, checked, coalesced and recorded; ``agent.drain`` carries the decision out.
Imports nothing at package load: ``sco-agent check`` stays light.
"""
