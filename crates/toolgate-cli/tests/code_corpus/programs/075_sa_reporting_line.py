# Task: "Who reports to Lena Fischer, directly or indirectly?"
members = list_team_members(department="sales")["members"]
by_manager = {}
for m in members:
    by_manager.setdefault(m["manager_id"], []).append(m)
lena = next(m for m in members if m["name"] == "Lena Fischer")
print("Lena:", lena["id"])


def reports_of(manager_id):
    for m in by_manager.get(manager_id, []):
        yield m["name"]
        yield from reports_of(m["id"])


everyone = list(reports_of(lena["id"]))
print(everyone)
final_answer(everyone)
