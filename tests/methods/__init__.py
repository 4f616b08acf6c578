"""One test file per method (its rounds computed by hand on quadratics), and the contracts
every registered method keeps."""
