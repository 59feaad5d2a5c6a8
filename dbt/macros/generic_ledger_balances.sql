{% test ledger_balances(model) %}
-- Every ledger row: counterfactual − costs = net, and costs = the sum of the cost lines.
select * from {{ model }}
where abs(counterfactual_eur - costs_eur - net_saving_eur) > 0.000001
   or abs(costs_eur - (reclaimable_eur + floor_eur + fallback_eur + headroom_eur + storage_eur + orchestrator_eur))
      > 0.000001
{% endtest %}
