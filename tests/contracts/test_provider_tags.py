"""Owner tags read back from an instance's tags (memoised: a controller reads every listed instance's tags every
pass, and an instance keeps its tags for life)."""

from __future__ import annotations

from contracts.provider import OwnerTags


def test_owner_tags_read_back_the_same_from_a_tuple_or_a_list_and_a_missing_tag_makes_an_instance_not_ours() -> None:
    owner = OwnerTags(workload="etl/a,b", pool="p1", partition="r1/batch", generation=3)
    tags = owner.to_tags()
    assert OwnerTags.from_tags(tags) == owner == OwnerTags.from_tags(list(tags))
    assert OwnerTags.parse(tags)["workload"] == "etl/a,b"
    assert OwnerTags.from_tags(tags[:-1]) is None and OwnerTags.missing(tags[:-1]) == ("sco:generation",)
    bad = tuple(t if not t.startswith("sco:generation=") else "sco:generation=x" for t in tags)
    assert OwnerTags.from_tags(bad) is None


def test_the_parsed_tags_are_a_fresh_dict_each_time_so_a_caller_may_change_its_copy() -> None:
    tags = OwnerTags(workload="etl", pool="p1", partition="r1/batch", generation=1).to_tags()
    first = OwnerTags.parse(tags)
    first["workload"] = "changed"
    assert OwnerTags.parse(tags)["workload"] == "etl"
