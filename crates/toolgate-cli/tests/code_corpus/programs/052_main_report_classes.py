# Produce short text reports: the first three people in support, and the open bug tickets.
import asyncio

class Report:
    title = "Report"

    def __init__(self, rows):
        self.rows = rows

    def header(self):
        return f"== {self.title} ({len(self.rows)}) =="

    def render(self):
        return "\n".join([self.header()] + [self.line(r) for r in self.rows])

class TeamReport(Report):
    title = "Team"

    def line(self, m):
        return f"{m['name']} - {m['role']} ({m['level']})"

class TicketReport(Report):
    title = "Open bugs"

    def line(self, t):
        return f"{t['id']}: {t['subject']}"

async def main():
    team, tickets = await asyncio.gather(
        list_team_members(department="support"),
        list_tickets(status="open", type="bug"),
    )
    bugs = [t for t in tickets["tickets"] if t["type"] == "bug" and t["status"] == "open"]
    reports = [TeamReport(team["members"][:3]), TicketReport(bugs)]
    for r in reports:
        print(r.render())
    return [r.header() for r in reports]

print(asyncio.run(main()))
