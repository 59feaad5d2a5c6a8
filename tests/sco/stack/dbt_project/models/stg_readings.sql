{{ config(materialized='table', engine='MergeTree', order_by='id') }}
-- round 1: ids 0..14 with v = id; round 2: ids 0..19 with v = id * 2
select number as id, toString(number * {{ var('round', 1) }}) as v
from numbers(10 + 5 * {{ var('round', 1) }})
