print("useractivity-handoffd")
