"""PrebuiltFieldsMixin (codex.core.api.serializers) builds a hot serializer's
fields once per class and gives each instance copies of its own: binding one
instance's fields never touches another's or the class's, a field holding
other fields is copied deeply, and one request's input never shows in the
next's validation."""

from __future__ import annotations

from rest_framework import serializers

from codex.core.api.serializers import PrebuiltFieldsMixin
from codex.tasks.api.serializers import TaskCreateSerializer


class WithAList(PrebuiltFieldsMixin, serializers.Serializer):
    name = serializers.CharField(max_length=5)
    tags = serializers.ListField(child=serializers.CharField(max_length=3))


def test_each_instance_has_fields_of_its_own_bound_to_it():
    first, second = TaskCreateSerializer(), TaskCreateSerializer()
    for name in ("title", "priority", "repository"):
        assert first.fields[name] is not second.fields[name]
        assert first.fields[name].parent is first
        assert second.fields[name].parent is second
    prototypes = TaskCreateSerializer._prebuilt_fields
    assert all(getattr(f, "parent", None) is None for f in prototypes.values())


def test_a_field_holding_fields_is_copied_deeply():
    first, second = WithAList(), WithAList()
    assert first.fields["tags"].child is not second.fields["tags"].child
    assert first.fields["tags"].child.parent is first.fields["tags"]


def test_one_requests_input_never_reaches_the_next():
    bad = WithAList(data={"name": "far too long", "tags": ["toolong"]})
    good = WithAList(data={"name": "ok", "tags": ["a"]})
    assert not bad.is_valid()
    assert set(bad.errors) == {"name", "tags"}
    assert good.is_valid(), good.errors
    assert good.validated_data == {"name": "ok", "tags": ["a"]}
    again = WithAList(data={"name": "far too long", "tags": []})
    assert not again.is_valid() and set(again.errors) == {"name"}
