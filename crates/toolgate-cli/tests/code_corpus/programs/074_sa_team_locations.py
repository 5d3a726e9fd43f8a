# Task: "Where are the members of the sales team based?"
from collections import defaultdict

team = list_team_members(department="sales")
by_city = defaultdict(list)
for m in team["members"]:
    by_city[m["location"]].append(m["name"])
for city, names in sorted(by_city.items()):
    print(city, "->", ", ".join(names))
final_answer(dict(by_city))
