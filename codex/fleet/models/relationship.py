"""Instance relationships: who spawned, forked or planned whom
(docs/domain/fleet.md#review-loop)."""

from __future__ import annotations

from django.db import models
from django.db.models import Max, Q
from django.utils import timezone

from codex.core.store import hot_aggregate
from codex.fleet.limits import REVIEW_ITERATION_CAP
from codex.fleet.models.choices import RelationshipType


class InstanceRelationshipQuerySet(models.QuerySet):
    @hot_aggregate("parent_id", highest=Max("review_iteration"))
    def review_iterations_of(self, parent_id: int) -> InstanceRelationshipQuerySet:
        """(the highest review iteration,) spawned from the instance (read at
        every review's start and by its guard)."""
        return self.filter(
            parent_id=parent_id, relationship_type=RelationshipType.SPAWNED_REVIEW
        )


class InstanceRelationship(models.Model):
    """A link from a parent instance to a child instance
    (docs/domain/fleet.md#review-loop): a coding agent spawning a review
    (`spawned_review`), a coding agent forking a parallel one (`created_fork`),
    a planning agent leading to an issue's agent (`planning_to_issue`).

    `review_iteration` counts review loops, 1..5, enforced by the database
    (docs/domain/fleet.md#review-loop: a CHECK of 0 < review_iteration <= 5); a parent
    can hold each review iteration once, so two workers spawning a review at
    the same moment cannot both take the same iteration.
    """

    parent = models.ForeignKey(
        "fleet.AgentInstance",
        on_delete=models.PROTECT,
        related_name="child_relationships",
    )
    child = models.ForeignKey(
        "fleet.AgentInstance",
        on_delete=models.PROTECT,
        related_name="parent_relationships",
    )
    relationship_type = models.CharField(
        max_length=20, choices=RelationshipType.choices
    )
    review_iteration = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = InstanceRelationshipQuerySet.as_manager()
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # Lookups by parent and by child use the foreign keys' own indexes;
            # by review iteration, the unique constraint below; this one serves
            # a child's relationships of one type.
            models.Index(fields=["child", "relationship_type"], name="rel_child_type"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(review_iteration__gte=1)
                & Q(review_iteration__lte=REVIEW_ITERATION_CAP),
                name="relationship_review_iteration_1_to_5",
            ),
            models.CheckConstraint(
                condition=Q(relationship_type__in=RelationshipType.values),
                name="relationship_type_valid",
            ),
            models.CheckConstraint(
                condition=~Q(parent=models.F("child")),
                name="relationship_not_to_itself",
            ),
            models.UniqueConstraint(
                fields=["parent", "review_iteration"],
                condition=Q(relationship_type=RelationshipType.SPAWNED_REVIEW),
                name="relationship_review_iteration_once",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.parent} → {self.child} ({self.relationship_type})"
