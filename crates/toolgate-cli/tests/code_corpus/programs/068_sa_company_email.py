# Task: "What is the email address of the customer from Forno Rossi?"
results = crm.search_customers(query="Forno Rossi")
print(results)
match = [c for c in results["customers"] if c["company"] == "Forno Rossi"]
customer = crm.get_customer(id=match[0]["id"])
print(customer)
final_answer(customer["email"])
