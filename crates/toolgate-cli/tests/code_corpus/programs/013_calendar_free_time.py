# How much free time does Omar (E104) have between 9:00 and 17:00 on 2024-06-12? Focus blocks count as free.
from datetime import datetime, timedelta

cal = get_calendar(employee_id="E104", date="2024-06-12")
day_start = datetime.fromisoformat("2024-06-12T09:00:00")
day_end = datetime.fromisoformat("2024-06-12T17:00:00")
busy = timedelta()
for event in cal["events"]:
    start = max(datetime.fromisoformat(event["start"]), day_start)
    end = min(datetime.fromisoformat(event["end"]), day_end)
    if end > start and event["kind"] != "focus":
        busy += end - start
free = (day_end - day_start) - busy
{"busy_minutes": busy.total_seconds() / 60, "free_hours": round(free.total_seconds() / 3600, 2)}
