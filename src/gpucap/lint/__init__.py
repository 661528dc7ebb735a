"""`gpucap lint`: rules over the whole input that catch GPU NodePool mistakes before they cost
money; each rule has a stable id, a severity, a why and a fix."""
