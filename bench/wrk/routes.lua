-- routes.lua — GET /v1/routes: the whole route list, a large and identical response (throughput case).
--
-- Why it exists: one wrk script per endpoint, so each can be measured on its
-- own. Request lists, non-2xx counting and the closing JSON line come from
-- common.lua; run it through bench/run_bench.py, which writes the input lists.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "common.lua")
common.install("routes", common.paths.routes)
