"""Which source privilege each way of reaching outside the database needs (ClickHouse's ``SOURCES`` grants).

ClickHouse checks ``FILE`` for ``file()``, ``URL`` for ``url()``, ``S3`` for ``s3()`` and so on, for table
functions, table and database engines and dictionary sources alike. chDB runs as ``clickhouse-local``, where
a few more things reach the host: the scalar ``file()`` reads a file, ``input()`` reads the process's stdin,
``executable()`` runs a program; those are held to ``FILE`` here (no user has it). A table function, engine or
dictionary source not listed at all is refused by the gate: a new one must be placed here first.
"""

from __future__ import annotations

__all__ = ["DATABASE_ENGINES", "DICTIONARY_SOURCES", "SAFE_TABLE_FUNCTIONS", "TABLE_ENGINES", "scalar_need",
           "source_of", "url_source"]

_SOURCES = {
    "file": "FILE", "filecluster": "FILE", "input": "FILE", "executable": "FILE", "executablepool": "FILE",
    "filelog": "FILE", "sqlite": "SQLITE", "embeddedrocksdb": "FILE", "disk": "FILE", "filesystem": "FILE",
    "backup": "FILE", "iceberglocal": "FILE", "deltalakelocal": "FILE", "hudilocal": "FILE", "paimonlocal": "FILE",
    "url": "URL", "urlcluster": "URL", "http": "URL", "https": "URL", "gcs": "S3", "oss": "S3", "cosn": "S3",
    "remote": "REMOTE", "remotesecure": "REMOTE", "cluster": "REMOTE", "clusterallreplicas": "REMOTE",
    "distributed": "REMOTE", "zookeeper": "REMOTE", "keepermap": "REMOTE", "jdbc": "JDBC", "odbc": "ODBC",
    "redis": "REDIS", "kafka": "KAFKA", "nats": "NATS", "rabbitmq": "RABBITMQ", "hive": "HIVE", "ytsaurus": "URL",
    "arrowflight": "URL", "prometheus": "URL", "timeseries": "URL", "dictionary_source": "REMOTE",
}
_PREFIXES = (("s3", "S3"), ("hdfs", "HDFS"), ("azure", "AZURE"), ("iceberg", "S3"), ("deltalake", "S3"),
             ("hudi", "S3"), ("paimon", "S3"), ("datalake", "S3"), ("mysql", "MYSQL"), ("materializedmysql", "MYSQL"),
             ("postgres", "POSTGRES"), ("materializedpostgres", "POSTGRES"), ("mongo", "MONGO"),
             ("arrowflight", "URL"))
# table functions that read nothing outside the database (``merge`` matches existing tables only, ``view``
# reads the tables its subquery names, which need their own SELECT)
SAFE_TABLE_FUNCTIONS = frozenset({
    "numbers", "numbers_mt", "zeros", "zeros_mt", "generaterandom", "generate_series", "generateseries", "values",
    "null", "merge", "view", "viewifpermitted", "viewexplain", "format", "dictionary", "fuzzjson", "fuzzquery",
    "primes"})  # not loop() or mergeTreeIndex(): they name a table by string, which may be a path
# not Buffer or Alias: they name another table by string, which in the default database may be a path
TABLE_ENGINES = frozenset({"memory", "log", "tinylog", "stripelog", "null", "set", "join", "merge",
                           "generaterandom", "dictionary", "view", "materializedview"})
DATABASE_ENGINES = frozenset({"atomic", "ordinary", "memory", "lazy", "replicated"})
# dictionary source -> privilege ("": nothing outside; a local CLICKHOUSE source is checked by its table)
DICTIONARY_SOURCES = {
    "clickhouse": "", "null": "", "file": "FILE", "executable": "FILE", "executable_pool": "FILE",
    "http": "URL", "https": "URL", "mysql": "MYSQL", "postgresql": "POSTGRES", "mongodb": "MONGO", "redis": "REDIS",
    "odbc": "ODBC", "jdbc": "JDBC", "cassandra": "REMOTE", "yamlregexptree": "FILE", "s3": "S3", "ytsaurus": "URL",
}
_SCALAR = {"file": "FILE", "hascolumnintable": "FILE", **dict.fromkeys((
    "dictget", "dictgetordefault", "dictgetornull", "dicthas", "dictgethierarchy", "dictisin", "dictgetchildren",
    "dictgetdescendants", "dictgetall"), "DICTGET")}


def source_of(name: str) -> str | None:
    """The source privilege of a table function or engine ``name`` (lower case), or None for a local one."""
    if name in _SOURCES:
        return _SOURCES[name]
    for prefix, privilege in _PREFIXES:
        if name.startswith(prefix):
            return privilege
    return None


def scalar_need(name: str) -> str | None:
    """The privilege an ordinary function call needs (``file('/x')`` reads a file; ``dictGet…`` a dictionary)."""
    if name in _SCALAR:
        return _SCALAR[name]
    if name.startswith("dictget"):
        return "DICTGET"
    return None


def url_source(name: str) -> str:
    """The source privilege a URL's scheme reads with (S3, HDFS, AZURE; URL for any other)."""
    scheme = name.split("://", 1)[0].lower()
    return {"s3": "S3", "gs": "S3", "hdfs": "HDFS", "az": "AZURE", "abfss": "AZURE"}.get(scheme, "URL")
