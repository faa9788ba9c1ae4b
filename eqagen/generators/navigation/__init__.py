"""Navigation episodes in HM3D-style houses: navigation grid and any-angle shortest paths with
habitat-sim's PathFinder vocabulary, atomic actions, the EXPRESS-Bench and OpenEQA policies, embedded
houses, HM3D file readers and an optional habitat-sim backend. See docs/navigation.md."""
