// Package safety holds no code: its tests are the project's safety record.
// Each scenario of the Redlock debate is reproduced with real redis-server
// processes (package redistest), behind fault-injecting proxies, through the
// four Redis drivers, and each test asserts its outcome, the unsafe ones
// included:
//
//	TestScenario01ContentionNeverTwoHolders         safe
//	TestScenario02MinorityDown                      safe, validity shrinks by elapsed time only
//	TestScenario03MajorityCut                       refused within about the node timeout, keys released
//	TestScenario04Latency                           validity never exceeds the keys' PTTL; refused when latency eats the TTL
//	TestScenario05LostReplies                       refused and released everywhere (no TTL wait), or granted when the connections break and the SET is asked again
//	TestScenario06PausedNodeLateSet                 safe; liveness cost of the late SET measured
//	TestScenario07PausedHolderLateWriteReachesUnprotectedResource
//	                                                unsafe for the resource: the case fencing tokens exist for
//	TestScenario07FencedPausedHolderLateWriteRejected
//	                                                safe with WithFencing and a resource that checks tokens
//	TestScenario08RestartWithoutPersistence         unsafe: double grant reproduced
//	TestScenario09DelayedRestartOrAOF               safe
//	TestScenario10ClockJump                         unsafe: double grant reproduced (memory nodes)
//	TestSoak                                        zero overlaps under tolerated faults (-soak=2m for longer)
//	TestSoakClusters                                the same with 2 of the 5 nodes Redis Clusters
//	TestAsymmetric*, TestWaiterNotice*, TestWaiterSubscribedOnAMinority, TestFencedSoakTokensRise,
//	TestDoRollingRestartsWithoutPersistence, TestDriversLateReply*,
//	TestCloseUnderFaultsLeavesNoGoroutine
//	                                                faults on one client's links, the pub/sub path, fencing
//	                                                and Do under faults, Close under faults: safe
//	TestSimulation                                  the real code over memory nodes in synctest bubbles: random
//	                                                calls and faults, every grant and call checked (-schedules=N -seed=S)
//
// SAFETY.md at the root of the repository (the root module's) tabulates the outcomes, the measured
// figures, the command that reproduces each, and the mitigations.
package safety
