// Renamed to minimize/hang_crash_repro.h (the repros of hang and crash
// findings). This forwarder stays only until fuzz/ includes the new name.
#pragma once

#include "minimize/hang_crash_repro.h"
