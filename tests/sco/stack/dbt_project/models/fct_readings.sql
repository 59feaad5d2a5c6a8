{{ config(materialized='incremental', unique_key='id', engine='ReplacingMergeTree', order_by='id') }}
select id, v from {{ ref('stg_readings') }}
{% if is_incremental() %}
where id >= 5
{% endif %}
