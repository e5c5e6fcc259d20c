// The page element every page script draws into (main#main, whose
// data-page says which page script runs and data-id which run or
// conversation it shows).

export const main = document.getElementById('main');
