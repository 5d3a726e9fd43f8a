# Combine the CRM record of CUS-1103 with her search hit and her open tickets into one profile.
base = crm.get_customer(id="CUS-1103")
hits = crm.search_customers(query="Rossi")["customers"]
hit = next(c for c in hits if c["id"] == "CUS-1103")
tickets = [
    t["id"] for t in list_tickets(customer_id="CUS-1103")["tickets"] if t["customer_id"] == "CUS-1103"
]
profile = base | {"last_order_date": hit["last_order_date"], "open_ticket_ids": tickets}
profile |= {"name": hit["name"], "company": hit["company"]}
{k: profile[k] for k in ("id", "name", "company", "tier", "last_order_date", "open_ticket_ids")}
