-- mix.lua — the "iPhone app" traffic mix: 60% nearby departures, 25% stop
-- departures, 10% stop search, 5% trip detail.
--
-- Why it exists: what a transit app's users actually send, so one number
-- says how the service holds up under realistic load. Each thread draws its
-- own request list with these weights; the closing JSON line carries the
-- drawn counts per kind (request_list_kinds) so the weights can be checked.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "common.lua")

common.install("mix", common.weighted(common.IPHONE_MIX))
