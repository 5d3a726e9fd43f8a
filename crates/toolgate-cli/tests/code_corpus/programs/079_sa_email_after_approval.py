# Task: "Let Jean Dupont know that his bulk price request is being reviewed."
hits = crm.search_customers(query="Dupont")["customers"]
jean = next(c for c in hits if c["name"] == "Jean Dupont")
print(jean)
customer = crm.get_customer(id=jean["id"])
result = send_email(
    to=customer["email"],
    subject="Your bulk price request",
    body="Hello Jean,\n\nwe are reviewing your request for a bulk price on rye flour and will come back to you this week.\n",
)
print(result)
final_answer(f"Email {result['status']} ({result['message_id']})")
