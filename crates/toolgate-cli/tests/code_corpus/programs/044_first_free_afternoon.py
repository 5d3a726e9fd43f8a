# Find the first sales rep with a free afternoon on 2024-06-12.
members = (await list_team_members("sales"))["members"]
found = None
for m in members:
    cal = await get_calendar(m["id"], "2024-06-12")
    afternoon = [e for e in cal["events"] if e["start"][11:13] >= "13"]
    if not afternoon:
        found = m["name"]
        break
    print(f"{m['name']}: {len(afternoon)} events after 13:00")
print("free:", found)
