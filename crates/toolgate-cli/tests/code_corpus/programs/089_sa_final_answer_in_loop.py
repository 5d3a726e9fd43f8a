# Task: "Find a sales rep based in Milan and give me their email."
members = list_team_members(department="sales")["members"]
for m in members:
    print("checking", m["name"], m["location"])
    if m["location"] == "Milan":
        final_answer(m["email"])
print("nobody in Milan")
final_answer(None)
