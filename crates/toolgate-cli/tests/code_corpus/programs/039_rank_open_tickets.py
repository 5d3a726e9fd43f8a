# Rank the open tickets by priority, then by age (oldest first).
from operator import itemgetter

rank = {"urgent": 0, "high": 1, "normal": 2, "low": 3}
tickets = (await list_tickets("open"))["tickets"]
open_ones = [dict(t, rank=rank[t["priority"]]) for t in tickets if t["status"] == "open"]
open_ones.sort(key=itemgetter("age_hours"), reverse=True)
open_ones.sort(key=itemgetter("rank"))
for t in open_ones:
    print(f"{t['priority']:<7} {t['age_hours']:>4}h  {t['id']}  {t['subject']}")
[t["id"] for t in open_ones]
