# Export the sales team as CSV (name, role, level, location), sorted by name.
import csv
import io

members = list_team_members(department="sales")["members"]
buf = io.StringIO()
writer = csv.DictWriter(
    buf, fieldnames=["name", "role", "level", "location"], extrasaction="ignore", lineterminator="\n"
)
writer.writeheader()
for m in sorted(members, key=lambda m: m["name"]):
    writer.writerow(m)
buf.getvalue()
