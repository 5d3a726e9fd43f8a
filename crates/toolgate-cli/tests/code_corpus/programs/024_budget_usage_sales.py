# Which sales team members have used more than 80% of their Q2 expense budget?
import asyncio
import json

team = await list_team_members("sales")
members = team["members"]
reports = await asyncio.gather(*[get_expense_report(m["id"], "Q2") for m in members])
flagged = []
for member, report in zip(members, reports):
    spent = sum(i["amount"] for i in report["items"] if i["status"] != "rejected")
    if spent > 0.8 * report["budget"]:
        flagged.append({"name": member["name"], "spent": round(spent, 2), "budget": report["budget"]})
print(json.dumps(flagged, indent=2))
