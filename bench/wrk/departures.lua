-- departures.lua — GET /v1/departures (nearby departures) at random points and times (radius 500 m, window 60 min, limit 50).
--
-- Why it exists: one wrk script per endpoint, so each can be measured on its
-- own. Request lists, non-2xx counting and the closing JSON line come from
-- common.lua; run it through bench/run_bench.py, which writes the input lists.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "common.lua")
common.install("departures", common.paths.departures)
