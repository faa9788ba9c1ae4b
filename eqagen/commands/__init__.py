"""The application layer: ``eqagen``'s sub-commands, each a module above the library packages it drives
(docs/DESIGN.md, "Layers")."""
