"""The team's pages of the tasks app (the dashboard, the request form, a
task's live page, the inbox), beside its API (`api/`): views, what they
show and their URLs, one module each."""
