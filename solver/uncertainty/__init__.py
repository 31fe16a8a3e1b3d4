"""MODEL.md §9's scenarios: factor draws, the occupancy law, goodput, sandbox room, deadline and stages in each scenario. No pyomo; arrays over scenarios."""
