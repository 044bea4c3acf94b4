package train

// learnSteps is the number of steps of TestLearnsMNIST.
const learnSteps = 120
