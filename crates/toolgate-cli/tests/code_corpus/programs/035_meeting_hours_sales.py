# How many hours of meetings does each person on the sales team have on 2024-06-12?
import asyncio
from datetime import datetime

members = (await list_team_members("sales"))["members"]
calendars = await asyncio.gather(*[get_calendar(m["id"], "2024-06-12") for m in members])


def hours(event):
    start = datetime.fromisoformat(event["start"])
    end = datetime.fromisoformat(event["end"])
    return (end - start).seconds / 3600


for m, cal in zip(members, calendars):
    meeting = sum(hours(e) for e in cal["events"] if e["kind"] in ("meeting", "external"))
    print(f"{m['name']:<18} {meeting:.2f} h")
