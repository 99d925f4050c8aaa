# replay: boot a known layout again.  Needs --seed or --seed-file; base
# KASLR is off so the whole layout is identical on every boot.
DESCRIPTION=fixed layout: nokaslr fgkaslr_seed=SEED
APPEND=nokaslr
REQUIRE_SEED=yes
TIMEOUT=120
