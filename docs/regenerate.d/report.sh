# docs/report.md: the report command's line, and the page's headings and key figures read back from the HTML.
show docs/report/seed.txt "trainground report instances/seed-week-75-uncertain.yaml --basis steady_state --out out/report.html"
also docs/report/seed.txt "python -c \"import re; t = open('out/report.html').read(); print(*re.findall(r'<h2>(.*?)</h2>', t), sep='\\n')\""
