"""Review reports written before the reviewer gave its security scan as
{vulnerabilities_found, items: [{type, description, severity, file, line}]}
(docs/domain/tasks.md#review-report) kept {issues_found, findings: [text]}:
each finding becomes an item with its text as the description (the type and
severity were never given: null), and vulnerabilities_found the number of
findings. The feedback gets its suggestion_count and priority_order from the
report's comments (blocking first). Backward keeps the new shape: it is a
superset of what the old code read.
"""

from django.db import migrations


def forward(apps, schema_editor):
    ReviewReport = apps.get_model("tasks", "ReviewReport")
    for report in ReviewReport.objects.iterator():
        changed = []
        security = report.security if isinstance(report.security, dict) else {}
        if "items" not in security and (
            "findings" in security or "issues_found" in security
        ):
            findings = [str(f) for f in security.get("findings") or []]
            report.security = {
                "vulnerabilities_found": len(findings),
                "items": [
                    {
                        "type": None,
                        "description": finding,
                        "severity": None,
                        "file": None,
                        "line": None,
                    }
                    for finding in findings
                ],
            }
            changed.append("security")
        feedback = report.feedback if isinstance(report.feedback, dict) else {}
        if "priority_order" not in feedback:
            comments = [c for c in report.comments or [] if isinstance(c, dict)]
            blocking = [
                c.get("id") for c in comments if c.get("severity") == "blocking"
            ]
            others = [
                c.get("id") for c in comments if c.get("severity") == "suggestion"
            ]
            report.feedback = {
                **feedback,
                "blocking_count": len(blocking),
                "suggestion_count": len(others),
                "priority_order": [i for i in (*blocking, *others) if i],
            }
            changed.append("feedback")
        if changed:
            report.save(update_fields=changed)


class Migration(migrations.Migration):
    dependencies = [("tasks", "0018_waiting_tasks_are_escalated")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
