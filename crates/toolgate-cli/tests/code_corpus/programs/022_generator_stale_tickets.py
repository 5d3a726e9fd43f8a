# Collect the tickets older than two days that nobody has picked up.
def stale(tickets, hours=48):
    for t in tickets:
        if t["age_hours"] > hours and t["assignee"] is None:
            yield t["id"], t["age_hours"]


tickets = list_tickets(status="all")["tickets"]
dict(stale(tickets))
